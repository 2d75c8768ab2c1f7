package app

// readMetrics gives the metrics read at scrape time their sources, once
// every component exists: the providers' breakers and rate limits, the job
// queue's depth, the approvals pending and the run journal's backlog.
func (a *App) readMetrics() {
	m := a.Metrics
	if m == nil {
		return
	}
	m.ReadBreakers(a.Providers.Health)
	m.ReadJobQueue(a.Jobs.Depth)
	m.ReadApprovalsPending(a.Store.CountPendingApprovals)
	m.ReadJournal(a.Recorder.Backlog)
}
