package media

func probePNG(data []byte) (Item, error)  { return Item{}, ErrUnsupported }
func probeJPEG(data []byte) (Item, error) { return Item{}, ErrUnsupported }
func probeWebP(data []byte) (Item, error) { return Item{}, ErrUnsupported }
func probeGIF(data []byte) (Item, error)  { return Item{}, ErrUnsupported }
func probeWAV(data []byte) (Item, error)  { return Item{}, ErrUnsupported }
func probeMP3(data []byte) (Item, error)  { return Item{}, ErrUnsupported }
func probeFLAC(data []byte) (Item, error) { return Item{}, ErrUnsupported }
func probeOGG(data []byte) (Item, error)  { return Item{}, ErrUnsupported }
func probeMP4(data []byte) (Item, error)  { return Item{}, ErrUnsupported }
