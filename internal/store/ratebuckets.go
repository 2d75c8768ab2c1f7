package store

import (
	"context"
	"fmt"
	"time"

	"github.com/svc-gateway/svc/internal/ratelimit"
)

var _ ratelimit.Buckets = (*Store)(nil)

// A bucket is full_at, the instant it holds r.Burst tokens again; at now it
// lacks (full_at - now) / r.Every of them. A draw of cost tokens is granted
// when, from max(full_at, now), the bucket still lacks no more than
// r.Burst - cost, and moves full_at cost intervals on; refused, it leaves
// full_at alone (the generic cell rate algorithm). max(full_at, now) also
// keeps a replica whose clock lags from crediting the time twice.
//
// The parameters: 1 limiter, 2 key, 3 now, 4 the lack a grant allows
// ((burst - cost) intervals), 5 cost intervals, 6 a new bucket's full_at.
const (
	takeTokensSQLite = `INSERT INTO rate_buckets (limiter, bucket, full_at, granted) VALUES (?1, ?2, ?6, 1)
		ON CONFLICT (limiter, bucket) DO UPDATE SET
			granted = max(rate_buckets.full_at, ?3) - ?3 <= ?4,
			full_at = CASE WHEN max(rate_buckets.full_at, ?3) - ?3 <= ?4
				THEN max(rate_buckets.full_at, ?3) + ?5 ELSE rate_buckets.full_at END
		RETURNING full_at, granted`
	takeTokensPostgres = `INSERT INTO rate_buckets (limiter, bucket, full_at, granted) VALUES ($1, $2, $6::bigint, TRUE)
		ON CONFLICT (limiter, bucket) DO UPDATE SET
			granted = GREATEST(rate_buckets.full_at, $3::bigint) - $3::bigint <= $4::bigint,
			full_at = CASE WHEN GREATEST(rate_buckets.full_at, $3::bigint) - $3::bigint <= $4::bigint
				THEN GREATEST(rate_buckets.full_at, $3::bigint) + $5::bigint ELSE rate_buckets.full_at END
		RETURNING full_at, granted`
)

// TakeTokens draws cost tokens from the bucket key of limiter in one
// statement, atomic under the row's lock and outside any transaction: one
// round trip per decision, however many replicas draw at once.
func (s *Store) TakeTokens(ctx context.Context, limiter, key string, r ratelimit.Rate, cost int64, now time.Time) (bool, time.Duration, error) {
	if r.Every <= 0 || cost < 1 || cost > r.Burst {
		return false, 0, fmt.Errorf("take %d tokens of a bucket of %d, one every %s", cost, r.Burst, r.Every)
	}
	at := now.UnixNano()
	allowed := int64(r.Burst-cost) * int64(r.Every)
	step := cost * int64(r.Every)
	var (
		fullAt  int64
		granted bool
	)
	err := s.write.QueryRowContext(ctx, s.sql(takeTokensSQLite, takeTokensPostgres),
		limiter, key, at, allowed, step, at+step).Scan(&fullAt, &granted)
	if err != nil {
		return false, 0, fmt.Errorf("take tokens: %w", err)
	}
	if granted {
		return true, 0, nil
	}
	return false, time.Duration(fullAt - at - allowed), nil
}

// ReturnTokens gives back cost tokens of the bucket key of limiter: its
// full_at comes cost intervals nearer. One already full stays full, since a
// draw reads max(full_at, now); one swept away was full.
func (s *Store) ReturnTokens(ctx context.Context, limiter, key string, r ratelimit.Rate, cost int64) error {
	_, err := s.write.ExecContext(ctx, `UPDATE rate_buckets SET full_at = full_at - ? WHERE limiter = ? AND bucket = ?`,
		cost*int64(r.Every), limiter, key)
	if err != nil {
		return fmt.Errorf("return tokens: %w", err)
	}
	return nil
}

// SweepBuckets deletes the buckets full at now, which a draw would find
// as it finds a missing one, and says how many.
func (s *Store) SweepBuckets(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.write.ExecContext(ctx, `DELETE FROM rate_buckets WHERE full_at <= ?`, now.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("sweep rate buckets: %w", err)
	}
	return res.RowsAffected()
}
