import IsletFuzzing

FuzzDriver.main(.deliveryCredential)
