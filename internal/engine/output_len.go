package engine

// Len returns the number of items queued and not yet drained: for a
// streaming reader, the tokens produced but not yet written to its client.
func (o *Output) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.items)
}
