import ReceiptCommands

await ReceiptCommand.run(arguments: nil)
