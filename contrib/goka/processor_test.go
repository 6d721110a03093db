package gokastore

const processorChildEnv = "GOKASTORE_PROCESSOR_CHILD"

func processorChild(spec string) int { return 3 }
