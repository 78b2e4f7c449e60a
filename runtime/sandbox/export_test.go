package sandbox

import "time"

// SetAnswerSlack shortens how long the host waits on a silent agent, for
// tests; the returned func restores it.
func SetAnswerSlack(d time.Duration) func() {
	old := answerSlack
	answerSlack = d
	return func() { answerSlack = old }
}
