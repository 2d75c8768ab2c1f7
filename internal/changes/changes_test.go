package changes_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/changes/changestest"
)

func TestAnnounceOutlivesTheCallersCancellation(t *testing.T) {
	feed := changestest.New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client hung up once the change was made

	changes.Announce(ctx, feed, "keys", "abc")
	notices := feed.Notices()
	require.Len(t, notices, 1)
	assert.Equal(t, changestest.Notice{Topic: "keys", Payload: "abc", Deadline: true}, notices[0])
}

func TestLoggedLogsAFailedNotice(t *testing.T) {
	feed := changestest.New()
	var out bytes.Buffer
	logged := changes.Logged(feed, hclog.New(&hclog.LoggerOptions{Output: &out}))

	require.NoError(t, logged.Notify(context.Background(), "settings", "t1"))
	assert.Empty(t, out.String())
	feed.Fail(errors.New("connection reset"))
	changes.Announce(context.Background(), logged, "settings", "t1")
	assert.Contains(t, out.String(), "connection reset")
	assert.Contains(t, out.String(), "topic=settings")
}
