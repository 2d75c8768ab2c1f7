-- Token buckets that several replicas share (ratelimit.Shared): one row
-- per limiter and key. A bucket is the instant it is full again, in
-- nanoseconds since the epoch (its tokens are what the time left to then
-- has not refilled), so one statement decides a draw under the row's lock;
-- granted says whether the last draw was. A row whose full_at has passed
-- is a full bucket, which the sweep deletes without changing anything.
-- No index on full_at: the sweep reads the whole (small) table once a
-- minute, and without one every draw's update can stay on its page (HOT).
-- Unlogged: a draw writes no WAL and its commit waits for no flush; a
-- crash of the database empties the table, which refills every bucket,
-- as a restart of one svc does its buckets in memory.
CREATE UNLOGGED TABLE rate_buckets (
    limiter TEXT NOT NULL,
    bucket  TEXT NOT NULL,
    full_at BIGINT NOT NULL,
    granted BOOLEAN NOT NULL,
    PRIMARY KEY (limiter, bucket)
);
