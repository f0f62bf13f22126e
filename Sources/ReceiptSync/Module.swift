// module ReceiptSync
