package core

// WaitsInProgress is how many waits the reports would list now (tests of
// the external package).
func (e *Engine) WaitsInProgress() int {
	e.reports.mu.Lock()
	defer e.reports.mu.Unlock()
	return len(e.reports.waits)
}
