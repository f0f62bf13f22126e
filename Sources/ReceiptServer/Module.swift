// module ReceiptServer
