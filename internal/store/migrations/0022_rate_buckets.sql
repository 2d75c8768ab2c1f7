-- Token buckets that several replicas share (ratelimit.Shared): one row
-- per limiter and key. A bucket is the instant it is full again, in
-- nanoseconds since the epoch (its tokens are what the time left to then
-- has not refilled), so one statement decides a draw under the row's lock;
-- granted says whether the last draw was. A row whose full_at has passed
-- is a full bucket, which the sweep deletes without changing anything.
-- SQLite, one process, keeps its buckets in memory: it has the table so
-- that both engines have the same store.
CREATE TABLE rate_buckets (
    limiter TEXT NOT NULL,
    bucket  TEXT NOT NULL,
    full_at INTEGER NOT NULL,
    granted INTEGER NOT NULL,
    PRIMARY KEY (limiter, bucket)
) WITHOUT ROWID;
