// module ReceiptCommands
