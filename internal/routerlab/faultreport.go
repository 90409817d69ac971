package routerlab

import (
	"time"
)

// FaultOutcome is how the router and its clients fared after one admin
// action, over the window from the action (when its admin call was made:
// the action takes effect while the call is answered) to the next action
// on the same worker (or the end of the run).
type FaultOutcome struct {
	AppliedFault
	// WindowS is the window's length.
	WindowS float64 `json:"window_s"`
	// Served counts requests sent in the window that the worker answered
	// in full; FailedAtWorker those it answered with an error (a draining
	// worker's 503, a cut stream): the router did send them to it.
	Served         int `json:"served"`
	FailedAtWorker int `json:"failed_at_worker"`
	// CutInFlight counts requests on the worker that were sent before the
	// action and failed after it (streams a kill reset).
	CutInFlight int `json:"cut_in_flight"`
	// CutUnattributed counts requests sent before the action that failed
	// after it without any worker's answer (a stream reset before its
	// headers got through the router); nothing says which worker they were
	// on, so the action is only the likely cause.
	CutUnattributed int `json:"cut_unattributed"`
	// FailedUnattributed counts requests sent in the window that failed
	// with no worker's answer at all (a refused connection, the router's
	// own 502): after a kill these are the requests the router sent to
	// the dead worker.
	FailedUnattributed int `json:"failed_unattributed"`
	// LastFailureS is the send time of the window's last failed request,
	// from the action (-1: none failed). After a kill it is the time the
	// router took to rebalance: from then on no request failed.
	LastFailureS float64 `json:"last_failure_s"`
	// FirstServedS is the send time of the first request the worker
	// served in full in the window, from the action (-1: none). After a
	// restart it is the time until the router used the worker again.
	FirstServedS float64 `json:"first_served_s"`
}

// faultOutcomes attributes the run's requests to the windows of the
// applied actions.
func faultOutcomes(applied []AppliedFault, records []*record, start time.Time) []FaultOutcome {
	var out []FaultOutcome
	end := 0.0
	for _, r := range records {
		if !r.res.end.IsZero() {
			end = max(end, r.res.end.Sub(start).Seconds())
		}
	}
	for i, a := range applied {
		from, to := a.SentS, max(end, a.SentS)
		for _, b := range applied[i+1:] {
			if b.Worker == a.Worker {
				to = b.SentS
				break
			}
		}
		o := FaultOutcome{AppliedFault: a, WindowS: to - from, LastFailureS: -1, FirstServedS: -1}
		for _, r := range records {
			res := &r.res
			if r.skipped != "" || res.sent.IsZero() {
				continue
			}
			sent := res.sent.Sub(start).Seconds()
			ended := res.end.Sub(start).Seconds()
			failed := res.err != ""
			if sent < from {
				switch {
				case failed && res.worker == a.Worker && ended >= from:
					o.CutInFlight++
				case failed && res.worker == "" && ended >= from:
					o.CutUnattributed++
				}
				continue
			}
			if sent >= to {
				continue
			}
			switch {
			case res.worker == a.Worker && !failed:
				o.Served++
				if o.FirstServedS < 0 || sent-from < o.FirstServedS {
					o.FirstServedS = sent - from
				}
			case res.worker == a.Worker:
				o.FailedAtWorker++
			case res.worker == "" && failed:
				o.FailedUnattributed++
			}
			if failed && (res.worker == a.Worker || res.worker == "") {
				o.LastFailureS = max(o.LastFailureS, sent-from)
			}
		}
		out = append(out, o)
	}
	return out
}
