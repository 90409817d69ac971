package worker

// State is what a fleet listing reports about a worker.
type State string

// Worker states, most significant first: a killed worker is only killed; a
// paused worker that is also draining reports paused.
const (
	StateStarting State = "starting" // not started yet (staggered start)
	StateRunning  State = "running"
	StatePaused   State = "paused"
	StateDraining State = "draining"
	StateKilled   State = "killed"
	StateStopped  State = "stopped" // stopped for good with the fleet
)

// States lists every state (for per-state gauges).
var States = []State{StateStarting, StateRunning, StatePaused, StateDraining, StateKilled, StateStopped}
