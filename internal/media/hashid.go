package media

// HashID returns vLLM's hash of an item named by an identifier (a part's
// uuid) rather than given by its data: MultiModalHasher.hash_kwargs with
// the identifier string in the item's place. vLLM computes it when the
// request has mm_processor_kwargs (BaseMultiModalProcessor._hash_mm_items:
// the processed item depends on them, so a uuid alone no longer names
// it); without kwargs the uuid itself is the item's identifier.
func HashID(modality, id string, opt HashOptions) (string, error) {
	return hashKwargs(modality, func(w *hashWriter) { w.item(modality, id) }, opt)
}
