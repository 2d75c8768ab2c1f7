package learning

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestForgetTenantTakesItsArtifactsOutOfTheIndex(t *testing.T) {
	s := &Service{index: newIndex()}
	for _, tenantID := range []string{"t_gone", "t_kept"} {
		s.index.m[tenantID] = map[string]Entry{"shape": {Promoted: &Served{ArtifactID: "art_" + tenantID}}}
	}
	s.ForgetTenant("t_gone")
	assert.True(t, s.index.Empty("t_gone"))
	_, ok := s.index.Match("t_gone", "shape")
	assert.False(t, ok, "a deleted tenant's artifact serves no more")
	e, ok := s.index.Match("t_kept", "shape")
	assert.True(t, ok)
	assert.Equal(t, "art_t_kept", e.Promoted.ArtifactID)
}
