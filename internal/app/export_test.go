package app

// Sweep runs one round of the daily sweep, as its timer does.
func (a *App) Sweep() { a.locked(sweepLock, a.sweep) }

// QueueLearning runs one round of the timed learning passes, as its timer
// does.
func (a *App) QueueLearning() { a.locked(learningLock, a.queueLearning) }

// RetentionKey is the key of the retention sweep queued on t's day.
var RetentionKey = retentionKey

// CheckLedgerKey is the start's check of the ledger key.
var CheckLedgerKey = checkLedgerKey
