package synth

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/learning/shape"
	"github.com/svc-gateway/svc/internal/shareddata"
)

// spamSystem is the prompt the traffic of the spam tests carries.
const spamSystem = "Classify this email message as spam or ham. Reply with the label only."

func spamShape(tb testing.TB, m shareddata.Message) shape.Shape {
	tb.Helper()
	sh, err := shape.Of("mail-filter", "gpt-4o-mini", []shape.Message{
		{Role: "system", Content: spamSystem},
		{Role: "user", Content: "Subject: " + m.Subject + "\n\n" + m.Text},
	}, "", nil)
	require.NoError(tb, err)
	return sh
}

// spamTraffic shuffles the corpus with a fixed seed and returns the runs
// the learning loop sees (70%) and the messages it never sees (30%), with
// the upstream's answers: the true label, flipped for a share noise of the
// messages.
func spamTraffic(tb testing.TB, noise float64) (seen, unseen []Example) {
	msgs := shareddata.SpamMessages(tb)
	rng := rand.New(rand.NewPCG(7, 11))
	rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	cut := len(msgs) * 7 / 10
	for i, m := range msgs {
		answer := m.Label
		if rng.Float64() < noise {
			answer = map[string]string{"spam": "ham", "ham": "spam"}[answer]
		}
		e := Example{RunID: "run_" + m.ID, Shape: spamShape(tb, m), Output: answer}
		if i < cut {
			seen = append(seen, e)
		} else {
			unseen = append(unseen, e)
		}
	}
	return seen, unseen
}

func TestSpamShapesAreOnePattern(t *testing.T) {
	seen, _ := spamTraffic(t, 0)
	keys := map[string]int{}
	for _, e := range seen {
		keys[e.Shape.Key]++
	}
	assert.Len(t, keys, 1, "every message of the one prompt is one pattern")
	assert.Equal(t, "Subject: {{subject}}\n{{text}}", seen[0].Shape.Fingerprints.Skeleton)
}

func TestSpamClassifierAgreesOrAbstains(t *testing.T) {
	seen, unseen := spamTraffic(t, 0)
	cand, rep := Fit(seen, Defaults)
	require.NotNil(t, cand, "synthesis: %s", rep.Reason)
	assert.Equal(t, TypeClassifier, cand.Type)
	assert.NotEmpty(t, cand.Provenance.SourceRunIDs)
	assert.NotEmpty(t, cand.Provenance.HoldoutRunIDs)
	assert.Len(t, cand.Replay, len(cand.Provenance.HoldoutRunIDs))

	a, err := Compile(cand.Type, cand.Representation)
	require.NoError(t, err)
	answered, agreed := 0, 0
	for _, e := range unseen {
		ev := Evaluate(a, EvalShadow, e)
		if ev.Outcome == OutcomeAbstain {
			continue
		}
		answered++
		if ev.Outcome == OutcomePass {
			agreed++
		}
	}
	agreement := float64(agreed) / float64(answered)
	served := float64(answered) / float64(len(unseen))
	t.Logf("spam: held-out messages %d, answered %d (share served %.1f%%), agreed %d (agreement %.2f%%), abstained %d; margin %.3f; %s",
		len(unseen), answered, 100*served, agreed, 100*agreement, len(unseen)-answered,
		a.(*Classifier).Margin, rep.Reason)
	assert.GreaterOrEqual(t, agreement, 0.95, "agreement on the held-out messages answered")
	assert.Greater(t, served, 0.2, "a classifier that abstains on nearly everything is worth nothing")

	// The representation is data that survives a round trip.
	again, err := Compile(cand.Type, cand.Representation)
	require.NoError(t, err)
	for _, e := range unseen[:50] {
		x, okx := a.Answer(e.Shape)
		y, oky := again.Answer(e.Shape)
		assert.Equal(t, okx, oky)
		assert.Equal(t, x, y)
	}
}

func TestNoisySpamFailsTheGates(t *testing.T) {
	seen, unseen := spamTraffic(t, 0.2)
	cand, rep := Fit(seen, Defaults)
	t.Logf("noisy upstream (20%% of labels flipped): %s", rep.Reason)
	require.Nil(t, cand, "an upstream that answers at random a fifth of the time must not be learned")
	assert.Contains(t, rep.Reason, "no artifact reaches the gates")
	assert.Contains(t, rep.Reason, "classifier:")

	// Even a classifier forced past synthesis would not pass promotion: its
	// evidence against the noisy answers keeps the lower bound low.
	th := Defaults
	th.ClassifierPrecision = 0.5
	th.LowerBound = 0
	forced, _ := Fit(seen, th)
	require.NotNil(t, forced)
	ans, err := Compile(forced.Type, forced.Representation)
	require.NoError(t, err)
	art := &Artifact{State: ArtifactShadow}
	for _, ev := range forced.Replay {
		art.Count(EvalReplay, ev.Outcome)
	}
	for _, e := range unseen[:200] {
		art.Count(EvalShadow, Evaluate(ans, EvalShadow, e).Outcome)
	}
	err = Defaults.Gate(art)
	require.Error(t, err)
	t.Logf("noisy upstream, forced artifact: %v", err)
	assert.Contains(t, err.Error(), "lower bound")
}
