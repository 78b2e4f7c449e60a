package sandbox

// SetFailpoint makes f run at each named step of suspend, restore and
// retire, for crash tests; the returned func restores the default.
func SetFailpoint(f func(step string)) func() {
	old := failpoint
	failpoint = f
	return func() { failpoint = old }
}
