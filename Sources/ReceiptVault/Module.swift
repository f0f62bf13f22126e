// module ReceiptVault
