import ReceiptCommands

await ReceiptCommand.main()
