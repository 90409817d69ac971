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
	// flops is the item's encoder FLOPs (0: unknown), and work its encoder
	// pass as operators (nil: unknown, or embeddings), for the hardware
	// timing model.
	flops float64
	work  *engine.EncoderWork
}

// resolveMedia checks the parts against --limit-mm-per-prompt and the
// model's modalities, then resolves each under the request's kwargs (kw).
// Errors are 400s naming the part.
func (s *Server) resolveMedia(parts []input.MediaPart, kw MMKwargs) ([]mmItem, *wire.APIError) {
	if len(parts) == 0 {
		return nil, nil
	}
	sc, e := s.mmScopeFor(kw)
	if e != nil {
		return nil, e
	}
	mo := &sc.opts
	counts := map[string]int{}
	seen := map[input.Modality]bool{}
	for _, p := range parts {
		seen[p.Modality] = true
		if seen[input.ModalityImage] && seen[input.ModalityImageEmbeds] {
			return nil, wire.ErrInvalid(p.Path, "Mixing raw image and embedding inputs is not allowed")
		}
		if seen[input.ModalityAudio] && seen[input.ModalityAudioEmbeds] {
			return nil, wire.ErrInvalid(p.Path, "Mixing raw audio and embedding inputs is not allowed")
		}
		key := p.Modality.LimitKey()
		counts[key]++
		if limit, set := mo.LimitPerPrompt[key]; set && limit == 0 && p.Modality.Embeds() && mo.EnableEmbeds &&
			mo.Processor != nil && mo.Processor.Supports(kindOf(key)) {
			// vLLM's tracker lets embeddings past a limit of 0 under
			// --enable-mm-embeds: a server that serves precomputed
			// embeddings only sets the modality's limit to 0.
			continue
		}
		if e := checkMMLimit(mo, key, counts[key]); e != nil {
			return nil, e
		}
	}
	items := make([]mmItem, len(parts))
	nth := map[string]int{}
	for i, p := range parts {
		key := p.Modality.LimitKey()
		it, e := s.resolvePart(p, sc, nth[key])
		if e != nil {
			return nil, e
		}
		// The n-th item of its modality takes the n-th placeholder, which
		// some families number (Phi-4-multimodal's <|image_n|>).
		nth[key]++
		it.repl.Target = mo.Processor.ItemTarget(it.item.Kind, nth[key])
		items[i] = it
	}
	if e := checkEmbedsHidden(mo, items); e != nil {
		return nil, e
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
	case "audio_embeds":
		return media.KindAudioEmbeds
	}
	return media.KindUnknown
}

// checkEmbedsPart applies vLLM's gate on image_embeds and audio_embeds
// (--enable-mm-embeds, its message) and refuses an empty payload; the dict
// form only where vLLM's data parser takes it (the Qwen-VL families).
func checkEmbedsPart(mo *settings.MultimodalOptions, p input.MediaPart) *wire.APIError {
	name := string(p.Modality)
	if mo.Processor == nil {
		return wire.ErrInvalid(p.Path, "%s needs a multimodal model.", name)
	}
	if !mo.EnableEmbeds {
		return wire.ErrInvalid(p.Path, "You must set `--enable-mm-embeds` to input `%s`", name)
	}
	if p.NoData {
		return wire.ErrInvalid(p.Path+"."+name, "A uuid-only %s part (no data) is not supported by mocker-server: vLLM's processor passes embeddings through without caching them, so a uuid alone names nothing it kept.", name)
	}
	if p.Modality == input.ModalityAudioEmbeds && mo.Processor.Supports(media.KindAudio) && !mo.Processor.AudioEmbeds() {
		return wire.ErrInvalid(p.Path, "audio_embeds are read for Qwen2-Audio only by mocker-server; %s's audio replacement needs the audio features.", mo.Processor.Family())
	}
	if p.Dict {
		if _, ok := mo.Processor.EmbedsGridMerge(); !ok {
			return wire.ErrInvalid(p.Path+"."+name, "The dict form of image_embeds (image_embeds with image_grid_thw) is read by the Qwen2-VL, Qwen2.5-VL and Qwen3-VL processors only; %s takes one base64 torch.save tensor of shape (tokens, hidden).", mo.Processor.Family())
		}
		if p.Data == "" || p.Grid == "" {
			return wire.ErrInvalid(p.Path+"."+name, "image_embeds and image_grid_thw must be base64 torch.save tensors.")
		}
		return nil
	}
	if p.Data == "" {
		return wire.ErrInvalid(p.Path+"."+name, "%s must be a base64 torch.save tensor of shape (tokens, hidden).", name)
	}
	return nil
}

// probePart reads the facts of a part's bytes seen for the first time: an
// embeddings dict, an embeddings tensor or a media file's headers.
func (s *Server) probePart(p input.MediaPart, sc *mmScope, data []byte) (media.Item, *wire.APIError) {
	var it media.Item
	var err error
	switch {
	case p.Dict:
		return s.resolveEmbedsDict(p, sc, data)
	case p.Modality.Embeds():
		if it, err = media.ProbeEmbeds(data); err == nil && p.Modality == input.ModalityAudioEmbeds {
			it.Kind = media.KindAudioEmbeds
		}
	default:
		it, err = media.Probe(data)
	}
	if err != nil {
		return media.Item{}, mediaError(p.Path, err, s.opts.Multimodal.MaxItemBytes)
	}
	return it, nil
}

// resolvePart finds one part's bytes and facts under the request's scope
// sc; nth is the part's index among the request's items of its modality.
func (s *Server) resolvePart(p input.MediaPart, sc *mmScope, nth int) (mmItem, *wire.APIError) {
	mo := &sc.opts
	field := p.Path
	embeds := p.Modality.Embeds()
	if embeds {
		if e := checkEmbedsPart(mo, p); e != nil {
			return mmItem{}, e
		}
	}
	buf := decodeBufs.Get().(*[]byte)
	src, e := s.partSource(p, sc, nth, *buf)
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
		} else if it, e = s.probePart(p, sc, data); e != nil {
			return mmItem{}, e
		}
		if want := kindOf(string(p.Modality)); it.Kind != want {
			return mmItem{}, wire.ErrInvalid(field, "The %s part holds %s data (%s), not %s.", p.Modality, it.Kind, it.Format, want)
		}
		if embeds && it.Frames > 1 {
			// One part is one item in vLLM's tracker: its chat parser
			// takes a (1, tokens, hidden) batch of one as that item
			// (deprecated), and stacks anything larger into a 4-D tensor
			// no data parser reads.
			return mmItem{}, wire.ErrInvalid(field, "%s of shape (%d, %d, hidden) holds %d items; send one (tokens, hidden) tensor per %s part.", p.Modality, it.Frames, it.EmbedTokens, it.Frames, p.Modality)
		}
		if !hit {
			if !p.Dict {
				it.Hash, _, _ = media.Hash(it.Kind, data, mo.Hash)
			}
			if it.Hash == "" {
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
		s.keepRemoteByUUID(p, key, it)
	}
	repl, err := mo.Processor.Replace(it)
	if err != nil {
		return mmItem{}, wire.ErrInvalid(field, "%s", err.Error())
	}
	id := it.Hash
	if p.UUID != "" {
		id = p.UUID
		if len(mo.Hash.MMProcessorKwargs) > 0 {
			// vLLM hashes a uuid with the request's kwargs: under them
			// the uuid no longer names the processed item alone.
			if id, err = media.HashID(it.Kind.Modality(), p.UUID, mo.Hash); err != nil {
				return mmItem{}, wire.ErrInvalid(field, "The %s cannot be hashed.", p.Modality)
			}
		}
	}
	flops, _ := mo.Processor.EncoderFLOPs(it) // 0 on error: priced per token
	work, _ := mo.Processor.EncoderWork(it)   // nil on error: priced by its FLOPs
	if embeds {
		flops, work = engine.PrecomputedEmbeds, nil // the client ran the encoder
	}
	return mmItem{part: p, item: it, repl: repl, id: id, flops: flops, work: work}, nil
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
// A part named by a uuid is looked up by it first (uuidSource; nth is
// its index among the request's items of its modality).
//
// A decoded payload goes into dst's capacity when it fits.
func (s *Server) partSource(p input.MediaPart, sc *mmScope, nth int, dst []byte) (partSource, *wire.APIError) {
	mo := &sc.opts
	field := p.Path
	byUUID, src, e := s.uuidSource(p, sc, nth)
	if e != nil || src.hit {
		return src, e
	}
	var (
		data   []byte
		remote string
		key    = src.key
		hit    bool
		cached media.Item
	)
	inline := p.Data
	if inline == "" && len(p.URL) >= 5 && strings.EqualFold(p.URL[:5], "data:") {
		inline = p.URL
	}
	if inline != "" && s.mmCache.Enabled() && !byUUID {
		key = media.Fingerprint(inline)
		if p.Data != "" {
			// The same base64 is a different item as audio or as image
			// embeddings, and in the dict form with another grid.
			key = media.Fingerprint(string(p.Modality), inline, p.Grid)
		}
		key = sc.cacheKey(key)
		cached, hit = s.mmCache.Get(key)
	}
	switch {
	case hit:
	case p.Data != "": // input_audio, image_embeds, audio_embeds
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
			if s.mmCache.Enabled() && !byUUID {
				key = sc.cacheKey(media.FingerprintBytes(data))
				cached, hit = s.mmCache.Get(key)
			}
		default:
			return partSource{}, wire.ErrInvalid(field, "The URL must be either a HTTP, data or file URL.")
		}
	}
	return partSource{data: data, remote: remote, key: key, hit: hit, cached: cached}, nil
}

// resolveEmbedsDict reads vLLM's dict form of image_embeds for a Qwen-VL
// model: {"image_embeds": (tokens, hidden), "image_grid_thw": (t, h, w)}.
// vLLM's chat parser loads each value with torch.load, stacks the grid of
// each part and concatenates the embeddings (_merge_embeds), and the
// Qwen2-VL data parser splits them into items by the grid: one image of
// t·h·w / merge² rows per grid row (_create_qwen2vl_field_factory). A
// (3,) grid is one image; an (n, 3) grid stacks to 3-D, which the field
// factory refuses with the message below. The item is hashed as vLLM's
// DictEmbeddingItems hands it to the hasher: the mapping of the two
// tensors.
func (s *Server) resolveEmbedsDict(p input.MediaPart, sc *mmScope, data []byte) (media.Item, *wire.APIError) {
	mo := &sc.opts
	field := p.Path + ".image_embeds"
	it, err := media.ProbeEmbeds(data)
	if err != nil {
		return media.Item{}, mediaError(field+".image_embeds", err, mo.MaxItemBytes)
	}
	if it.Frames > 0 {
		return media.Item{}, wire.ErrInvalid(field+".image_embeds", "image_embeds in the dict form must be 2-D (tokens, hidden); got a 3-D tensor.")
	}
	gfield := field + ".image_grid_thw"
	_, g, err := media.ParseDataURL("data:;base64,"+p.Grid, mo.MaxItemBytes)
	if err != nil {
		return media.Item{}, mediaError(gfield, err, mo.MaxItemBytes)
	}
	grid, err := media.ReadTensor(g)
	if err != nil {
		return media.Item{}, mediaError(gfield, err, mo.MaxItemBytes)
	}
	thw, err := grid.Ints()
	if err != nil {
		return media.Item{}, wire.ErrInvalid(gfield, "image_grid_thw must be an integer tensor (t, h, w); got %s.", grid.Dtype)
	}
	switch {
	case len(grid.Shape) == 2 && grid.Shape[1] == 3:
		// Stacked with the other parts' grids: (1, n, 3), whose
		// prod(-1) is 2-D.
		return media.Item{}, wire.ErrInvalid(gfield, "size_per_item should be a 1-D tensor, but found shape: torch.Size([1, %d])", grid.Shape[0])
	case len(grid.Shape) != 1 || grid.Shape[0] != 3:
		return media.Item{}, wire.ErrInvalid(gfield, "image_grid_thw must be a tensor of shape (3,): (t, h, w); got shape %v.", grid.Shape)
	}
	merge, _ := mo.Processor.EmbedsGridMerge()
	tokens := 1
	for _, v := range thw {
		if v <= 0 || v > 1<<16 {
			return media.Item{}, wire.ErrInvalid(gfield, "image_grid_thw %v must hold three positive patch counts.", thw)
		}
		tokens *= int(v)
	}
	tokens /= merge * merge
	if tokens != it.EmbedTokens {
		return media.Item{}, wire.ErrInvalid(field, "image_grid_thw %v gives %d image tokens (t·h·w / %d²) but image_embeds has %d rows.", thw, tokens, merge, it.EmbedTokens)
	}
	embeds, err := media.ReadTensor(data)
	if err != nil {
		return media.Item{}, mediaError(field+".image_embeds", err, mo.MaxItemBytes)
	}
	// vLLM's item is a dict built by iterating a set of its keys; the
	// mock hashes them in the order image_embeds, image_grid_thw
	// (docs/multimodal.md).
	it.Hash, err = media.HashEmbeds("image", []media.NamedTensor{
		{Name: "image_embeds", Tensor: embeds}, {Name: "image_grid_thw", Tensor: grid},
	}, mo.Hash)
	if err != nil {
		return media.Item{}, wire.ErrInvalid(field, "The image_embeds cannot be hashed.")
	}
	return it, nil
}
