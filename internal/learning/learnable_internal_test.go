package learning

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/ledger"
)

func TestLearnable(t *testing.T) {
	answer := func(content string) []byte {
		return []byte(`{"choices":[{"message":{"role":"assistant","content":"` + content + `"}}]}`)
	}
	text, live, tool := learnable(&RunRecord{Route: ledger.RouteLive, Response: answer("Paris")})
	assert.Equal(t, "Paris", text)
	assert.True(t, live)
	assert.False(t, tool)

	_, live, tool = learnable(&RunRecord{Route: ledger.RouteLive, Response: []byte(`{"choices":[{"message":{"tool_calls":[{"id":"t"}]}}]}`)})
	assert.False(t, live)
	assert.True(t, tool)

	_, live, _ = learnable(&RunRecord{Route: ledger.RouteExactCache, Response: answer("Paris")})
	assert.False(t, live, "only a live answer teaches")

	text, live, _ = learnable(&RunRecord{Route: ledger.RouteLive, Response: answer(strings.Repeat("a", maxLearnedReply))})
	assert.False(t, live, "an answer past the bound is not read")
	assert.Empty(t, text)
}
