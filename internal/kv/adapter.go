package kv

// Adapter identifies the LoRA adapter a sequence runs under. The zero value
// is the base model. KV computed under one adapter is not valid under
// another, so the adapter's name enters every block hash (vLLM puts it first
// in each block's extra keys) and its id and name travel in Stored events.
type Adapter struct {
	// ID is the adapter's integer id as the server assigned it (≥ 1); 0
	// means the base model.
	ID int
	// Name is the adapter's served name; it is what the hash covers, so
	// the same name gives the same hashes on every replica.
	Name string
}

// IsBase reports whether a is the base model (no adapter).
func (a Adapter) IsBase() bool { return a.ID == 0 && a.Name == "" }

// Keys are the per-request inputs of a block hash besides the tokens.
type Keys struct {
	// Salt is the request's cache salt ("" for none); it enters block 0.
	Salt string
	// Adapter is the request's LoRA adapter; its name enters every block.
	Adapter Adapter
	// MM are the prompt's multimodal items sorted by offset; an item enters
	// the blocks its placeholder tokens cover, between the adapter name and
	// the salt (vLLM's order). PromptLen is the prompt's length in tokens,
	// which decides how vLLM looks the items up for a block (mmKeys).
	MM        []MMFeature
	PromptLen int
}

// extraKeys returns block i's extra keys in vLLM's order (adapter name,
// then the salt for block 0), or nil when there are none. one is a reused
// one-element slice holding the adapter name, shared by blocks i ≥ 1.
func (k Keys) extraKeys(i int, one []string) []string {
	salted := i == 0 && k.Salt != ""
	switch {
	case k.Adapter.Name == "" && !salted:
		return nil
	case k.Adapter.Name == "":
		return []string{k.Salt}
	case !salted:
		return one
	}
	return []string{k.Adapter.Name, k.Salt}
}
