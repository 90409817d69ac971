package mmproc

func forModel(id string, files ModelFiles) (*Processor, error) {
	return nil, ErrUnknownModel
}
