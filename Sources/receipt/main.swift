print("receipt")
