// module ReceiptWire
