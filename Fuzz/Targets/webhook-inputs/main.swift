import IsletFuzzing

FuzzDriver.main(.webhookInputs)
