package events

// Options is what the publishers of one worker need of its configuration.
// internal/worker builds it once (worker.EventsOptions); internal/fleet
// resolves its port plan from the same. The zero value configures no
// publisher.
type Options struct {
	// DPSize is the number of DP ranks, each with its own publishers; 0
	// means 1.
	DPSize int

	// KVPort, when > 0, publishes KV events Dynamo style (zmq_kv_events_port):
	// rank r binds Host:KVPort+r with the default sizes, and a replay ROUTER
	// on Host:ReplayPort+r when ReplayPort > 0. It takes precedence over
	// VLLM.
	KVPort, ReplayPort int
	// Host is the interface Dynamo-style ports bind on ("" or "*": all).
	Host string
	// VLLM is vLLM's kv_events_config when it enables the zmq publisher;
	// nil means no vLLM-style sockets.
	VLLM *VLLMKVEvents
	// PortTuning, when set with KVPort, gives the Dynamo-style sockets the
	// BufferSteps, HWM and MaxQueueSize of a (disabled) kv_events_config
	// given beside the port; its endpoints and topic are not used, and
	// zero sizes take the defaults.
	PortTuning *VLLMKVEvents

	// Encoding is how events are written; the zero value is EncodingMap.
	Encoding Encoding
	// NoReplayTopicFrame sends replay replies without the topic frame, as
	// older consumers expect; by default they carry it.
	NoReplayTopicFrame bool
	// Silent opens the configured KV sockets but publishes nothing: no
	// event can happen (prefix caching off, a decode worker), yet
	// consumers can connect.
	Silent bool

	// FPMEndpoint is rank 0's forward-pass-metrics PUB endpoint (ranks
	// offset it, OffsetEndpoint); "" means no FPM publishing.
	FPMEndpoint string
	// WorkerID is carried in every FPM message.
	WorkerID string
}

// VLLMKVEvents is the part of vLLM's kv_events_config the publishers use.
type VLLMKVEvents struct {
	// Endpoint is rank 0's PUB endpoint; ShouldBind decides bind or connect.
	Endpoint string
	// ReplayEndpoint is rank 0's replay ROUTER endpoint; "" means none.
	ReplayEndpoint string
	// Topic is the first frame of every KV message.
	Topic string
	// BufferSteps (replay buffer), HWM (send high-water mark) and
	// MaxQueueSize (batches queued per rank); < 1 means the default.
	BufferSteps, HWM, MaxQueueSize int
}
