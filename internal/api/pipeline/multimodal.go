package pipeline

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/mmproc"
)

// A chat request's multimodal parts (docs/multimodal.md): each part's bytes
// are found (a data URL decoded, a local file read within the size bound, an http(s) URL
// sized from the configured defaults, never fetched), their headers probed,
// the model's processor gives the tokens the item becomes and vLLM's
// multimodal hash names it. Rendering then puts the processor's placeholder
// where the template puts the item, and tokenization expands each
// placeholder into the item's replacement tokens (expand.go).

// mmItem is one resolved multimodal part.
type mmItem struct {
	part input.MediaPart
	item media.Item
	repl mmproc.Replacement
	// id is the item's identifier in block hashes: the part's uuid when it
	// has one (vLLM uses it in place of the hash), else its mm hash.
	id string
	// flops is the item's encoder FLOPs (0: unknown), for the hardware
	// timing model.
	flops float64
}

// resolveMedia checks the parts against --limit-mm-per-prompt and the
// model's modalities, then resolves each. Errors are 400s naming the part.
func (s *Server) resolveMedia(parts []input.MediaPart) ([]mmItem, *wire.APIError) {
	if len(parts) == 0 {
		return nil, nil
	}
	mo := &s.opts.Multimodal
	counts := map[string]int{}
	var images, embeds bool
	for _, p := range parts {
		images = images || p.Modality == input.ModalityImage
		embeds = embeds || p.Modality == input.ModalityImageEmbeds
		if images && embeds {
			return nil, wire.ErrInvalid(p.Path, "Mixing raw image and embedding inputs is not allowed")
		}
		key := p.Modality.LimitKey()
		counts[key]++
		if e := checkMMLimit(mo, key, counts[key]); e != nil {
			return nil, e
		}
	}
	items := make([]mmItem, len(parts))
	for i, p := range parts {
		it, e := s.resolvePart(p)
		if e != nil {
			return nil, e
		}
		items[i] = it
	}
	return items, nil
}

// checkMMLimit is vLLM's BaseProcessingInfo.validate_num_items: the limit
// is the smaller of what the model supports (0 for a modality it has no
// encoder for) and --limit-mm-per-prompt; the hint to raise the flag is
// given only when the model could take more.
func checkMMLimit(mo *settings.MultimodalOptions, modality string, n int) *wire.APIError {
	supported := -1 // unbounded
	if mo.Processor == nil || !mo.Processor.Supports(kindOf(modality)) {
		supported = 0
	}
	allowed := settings.DefaultMMLimit
	if v, ok := mo.LimitPerPrompt[modality]; ok {
		allowed = v
	}
	limit := allowed
	if supported >= 0 {
		limit = min(supported, allowed)
	}
	if n <= limit {
		return nil
	}
	msg := "At most %d %s(s) may be provided in one prompt."
	if supported < 0 || n <= supported {
		msg += " Set `--limit-mm-per-prompt` to increase this limit."
	}
	return wire.ErrInvalid(modality, msg, limit, modality)
}

func kindOf(modality string) media.Kind {
	switch modality {
	case "image":
		return media.KindImage
	case "audio":
		return media.KindAudio
	case "video":
		return media.KindVideo
	case "image_embeds":
		return media.KindEmbeds
	}
	return media.KindUnknown
}

// checkEmbedsPart applies vLLM's gate on image_embeds (--enable-mm-embeds,
// its message) and refuses an empty payload (the dict form is refused
// when the part is read).
func checkEmbedsPart(mo *settings.MultimodalOptions, p input.MediaPart) *wire.APIError {
	if !mo.EnableEmbeds {
		return wire.ErrInvalid(p.Path, "You must set `--enable-mm-embeds` to input `image_embeds`")
	}
	if p.Data == "" {
		return wire.ErrInvalid(p.Path+".image_embeds", "image_embeds must be a base64 torch.save tensor of shape (tokens, hidden).")
	}
	return nil
}

// resolvePart finds one part's bytes and facts.
func (s *Server) resolvePart(p input.MediaPart) (mmItem, *wire.APIError) {
	mo := &s.opts.Multimodal
	field := p.Path
	embeds := p.Modality == input.ModalityImageEmbeds
	if embeds {
		if e := checkEmbedsPart(mo, p); e != nil {
			return mmItem{}, e
		}
	}
	buf := decodeBufs.Get().(*[]byte)
	src, e := s.partSource(p, *buf)
	defer putDecodeBuf(buf, src.data)
	if e != nil {
		return mmItem{}, e
	}
	data, remote, key, hit, cached := src.data, src.remote, src.key, src.hit, src.cached
	var it media.Item
	if remote != "" {
		it = remoteItem(mo, p.Modality)
		if s.mmObs != nil {
			s.mmObs.ObserveUnfetchedMedia(string(p.Modality))
		}
	} else {
		if hit {
			it = cached
		} else {
			var err error
			if embeds {
				it, err = media.ProbeEmbeds(data)
			} else {
				it, err = media.Probe(data)
			}
			if err != nil {
				return mmItem{}, mediaError(field, err, mo.MaxItemBytes)
			}
		}
		if want := kindOf(string(p.Modality)); it.Kind != want {
			return mmItem{}, wire.ErrInvalid(field, "The %s part holds %s data (%s), not %s.", p.Modality, it.Kind, it.Format, want)
		}
		if embeds && it.Frames > 0 {
			// One part is one item in vLLM's tracker; a stacked batch
			// in one part has no single placeholder count.
			return mmItem{}, wire.ErrInvalid(field, "image_embeds of shape (%d, %d, hidden) holds %d items; send one (tokens, hidden) tensor per image_embeds part.", it.Frames, it.EmbedTokens, it.Frames)
		}
		if !hit {
			if it.Hash, _, _ = media.Hash(it.Kind, data, mo.Hash); it.Hash == "" {
				return mmItem{}, wire.ErrInvalid(field, "The %s cannot be hashed.", p.Modality)
			}
			s.mmCache.Put(key, it)
		}
		if s.mmObs != nil && s.mmCache.Enabled() {
			s.mmObs.ObserveMMCache(1, boolInt(hit))
		}
	}
	if remote != "" {
		// vLLM hashes the fetched bytes; unfetched, the URL names the item.
		it.Hash, _, _ = media.Hash(it.Kind, []byte(remote), mo.Hash)
	}
	repl, err := mo.Processor.Replace(it)
	if err != nil {
		return mmItem{}, wire.ErrInvalid(field, "%s", err.Error())
	}
	id := it.Hash
	if p.UUID != "" {
		id = p.UUID
	}
	flops, _ := mo.Processor.EncoderFLOPs(it) // 0 on error: priced per token
	if embeds {
		flops = engine.PrecomputedEmbeds // the client ran the encoder
	}
	return mmItem{part: p, item: it, repl: repl, id: id, flops: flops}, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// remoteItem is an http(s) item the mock does not fetch: the configured
// default size.
func remoteItem(mo *settings.MultimodalOptions, m input.Modality) media.Item {
	switch m {
	case input.ModalityAudio:
		return media.Item{Kind: media.KindAudio, Duration: mo.RemoteDuration, SampleRate: 16000, Channels: 1}
	case input.ModalityVideo:
		fps := 2.0
		return media.Item{Kind: media.KindVideo, Width: mo.RemoteImageWidth, Height: mo.RemoteImageHeight,
			Frames: mo.RemoteVideoFrames, FPS: fps}
	}
	return media.Item{Kind: media.KindImage, Width: mo.RemoteImageWidth, Height: mo.RemoteImageHeight}
}

// checkMediaDomain applies --allowed-media-domains with vLLM's message.
func checkMediaDomain(allowed []string, u *url.URL, field string) *wire.APIError {
	if len(allowed) == 0 {
		return nil
	}
	host := u.Hostname()
	for _, d := range allowed {
		if strings.EqualFold(d, host) {
			return nil
		}
	}
	return wire.ErrInvalid(field, "The URL must be from one of the allowed domains: %s. Input URL domain: %s",
		pyList(allowed), host)
}

// pyList formats strings as Python prints a list of them.
func pyList(ss []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + s + "'")
	}
	b.WriteByte(']')
	return b.String()
}

// readLocalMedia reads a file:// item under --allowed-local-media-path, at
// most MaxItemBytes of it (a larger file is refused unread).
func readLocalMedia(mo *settings.MultimodalOptions, u *url.URL) ([]byte, error) {
	if mo.AllowedLocalMediaPath == "" {
		return nil, errors.New("Cannot load local files without `--allowed-local-media-path`.")
	}
	path, err := filepath.Abs(filepath.Clean(u.Path))
	if err != nil {
		return nil, err
	}
	root, err := filepath.Abs(mo.AllowedLocalMediaPath)
	if err != nil {
		return nil, err
	}
	// Resolve links so a link inside the root cannot point out of it.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	if rel, err := filepath.Rel(root, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, errors.New("The file path " + u.Path + " must be a subpath of `--allowed-local-media-path` " + mo.AllowedLocalMediaPath + ".")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.New("Cannot read " + u.Path + ": no such file")
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, errors.New("Cannot read " + u.Path + ": not a regular file")
	}
	if mo.MaxItemBytes > 0 && st.Size() > int64(mo.MaxItemBytes) {
		return nil, mediaTooLarge(int(st.Size()), mo.MaxItemBytes)
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, errors.New("Cannot read " + u.Path)
	}
	return data, nil
}

type tooLargeError struct{ n, limit int }

func (e tooLargeError) Error() string { return "media item too large" }
func (e tooLargeError) Unwrap() error { return media.ErrTooLarge }

func mediaTooLarge(n, limit int) error { return tooLargeError{n, limit} }

func tooLarge(field string, n, limit int) *wire.APIError {
	return wire.ErrInvalid(field, "The media item is too large (--max-media-item-bytes): %d bytes, limit %d", n, limit)
}

// mediaError maps the media package's errors to the part's 400.
func mediaError(field string, err error, limit int) *wire.APIError {
	switch {
	case errors.Is(err, media.ErrTooLarge):
		var tl tooLargeError
		if errors.As(err, &tl) {
			return tooLarge(field, tl.n, limit)
		}
		return wire.ErrInvalid(field, "The media item is too large (--max-media-item-bytes): %s",
			strings.TrimPrefix(err.Error(), media.ErrTooLarge.Error()+": "))
	case errors.Is(err, media.ErrCorrupt):
		return wire.ErrInvalid(field, "The media data is corrupt: %s", err.Error())
	case errors.Is(err, media.ErrUnsupported):
		return wire.ErrInvalid(field, "The media format is not supported: %s", err.Error())
	}
	return wire.ErrInvalid(field, "The media item cannot be read: %s", err.Error())
}

// decodeBufs holds the buffers data URLs are decoded into (*[]byte): an
// item's bytes are needed only until it is probed and hashed (the Item
// keeps facts, not bytes), so one buffer serves item after item instead of
// a fresh allocation of megabytes each. sync.Pool drops what a GC finds
// unused, so idle buffers do not stay.
var decodeBufs = sync.Pool{New: func() any { return new([]byte) }}

// putDecodeBuf returns buf to decodeBufs, keeping data's array when it is
// the larger (the decode outgrew buf).
func putDecodeBuf(buf *[]byte, data []byte) {
	if cap(data) > cap(*buf) {
		*buf = data[:0]
	}
	decodeBufs.Put(buf)
}

// partSource is where a part's bytes are: decoded (data), an unfetched
// URL (remote), or a processor-cache hit (cached) under key.
type partSource struct {
	data   []byte
	remote string
	key    media.Key
	hit    bool
	cached media.Item
}

// partSource finds a part's bytes: a cache hit on the item as sent, a
// decoded data URL or input_audio payload, a local file under
// --allowed-local-media-path, or an http(s) URL left unfetched.
//
// A decoded payload goes into dst's capacity when it fits.
func (s *Server) partSource(p input.MediaPart, dst []byte) (partSource, *wire.APIError) {
	mo := &s.opts.Multimodal
	field := p.Path
	var (
		data   []byte
		remote string
		key    media.Key
		hit    bool
		cached media.Item
	)
	inline := p.Data
	if inline == "" && len(p.URL) >= 5 && strings.EqualFold(p.URL[:5], "data:") {
		inline = p.URL
	}
	if inline != "" && s.mmCache.Enabled() {
		key = media.Fingerprint(inline)
		cached, hit = s.mmCache.Get(key)
	}
	switch {
	case hit:
	case p.Data != "": // input_audio
		if mo.MaxItemBytes > 0 && len(p.Data)/4*3 > mo.MaxItemBytes+2 {
			return partSource{}, tooLarge(field, len(p.Data)/4*3, mo.MaxItemBytes)
		}
		var err error
		if data, err = media.AppendBase64(dst, p.Data, mo.MaxItemBytes); err != nil {
			return partSource{}, mediaError(field, err, mo.MaxItemBytes)
		}
	case len(p.URL) >= 5 && strings.EqualFold(p.URL[:5], "data:"):
		var err error
		if _, data, err = media.AppendDataURL(dst, p.URL, mo.MaxItemBytes); err != nil {
			return partSource{}, mediaError(field, err, mo.MaxItemBytes)
		}
	default:
		u, err := url.Parse(p.URL)
		if err != nil {
			return partSource{}, wire.ErrInvalid(field, "Invalid media URL: %s", err.Error())
		}
		switch strings.ToLower(u.Scheme) {
		case "http", "https":
			if e := checkMediaDomain(mo.AllowedMediaDomains, u, field); e != nil {
				return partSource{}, e
			}
			remote = p.URL
		case "file":
			if data, err = readLocalMedia(mo, u); err != nil {
				if errors.Is(err, media.ErrTooLarge) {
					return partSource{}, mediaError(field, err, mo.MaxItemBytes)
				}
				return partSource{}, wire.ErrInvalid(field, "%s", err.Error())
			}
			if s.mmCache.Enabled() {
				key = media.FingerprintBytes(data)
				cached, hit = s.mmCache.Get(key)
			}
		default:
			return partSource{}, wire.ErrInvalid(field, "The URL must be either a HTTP, data or file URL.")
		}
	}
	return partSource{data: data, remote: remote, key: key, hit: hit, cached: cached}, nil
}
