package synth

import (
	"errors"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/svc-gateway/svc/internal/learning/shape"
)

// Classifier is a multinomial naive Bayes model over the set of tokens of
// a request's slot text (each token counted once per request, Laplace
// smoothing). It answers with the label of highest posterior, unless the
// log-odds gap between the best and the second-best label is below Margin:
// then it abstains and the call goes live.
//
// Margin is calibrated at synthesis: the training runs are scored by
// 4-fold cross-fitting, sorted by gap, and Margin is the smallest gap at
// which the runs answered agree with the recorded answers at
// Thresholds.ClassifierPrecision (98%) or better.
type Classifier struct {
	Model    string               `json:"model"` // "multinomial_nb"
	Labels   []string             `json:"labels"`
	LogPrior []float64            `json:"logPrior"`
	Weights  map[string][]float64 `json:"weights"` // token → log P(token | label)
	Margin   float64              `json:"margin"`
	// MaxTokens is the most distinct tokens a training request had, and
	// MinKnown the least share of a request's tokens the model must know:
	// a request padded with text the model never saw (to drown its
	// evidence) is outside what it learned, and it abstains.
	MaxTokens int     `json:"maxTokens,omitempty"`
	MinKnown  float64 `json:"minKnown,omitempty"`
}

// minKnownShare is MinKnown of the classifiers synthesized now.
const minKnownShare = 0.5

// maxVocabulary bounds a classifier's tokens: the most frequent ones.
const maxVocabulary = 6000

// maxDocTokens bounds the tokens read from one request.
const maxDocTokens = 4000

func (c *Classifier) compile() (*Classifier, error) {
	if len(c.Labels) < 2 || len(c.LogPrior) != len(c.Labels) {
		return nil, errors.New("learning: a classifier needs two labels or more, each with a prior")
	}
	for _, w := range c.Weights {
		if len(w) != len(c.Labels) {
			return nil, errors.New("learning: a classifier weight does not cover every label")
		}
	}
	return c, nil
}

// Answer classifies the slot text.
func (c *Classifier) Answer(sh shape.Shape) (string, bool) {
	tokens := tokenize(sh.SlotText())
	if c.MaxTokens > 0 && len(tokens) > c.MaxTokens {
		return "", false
	}
	best, gap, known := c.score(tokens)
	if known == 0 || gap < c.Margin || float64(known) < c.MinKnown*float64(len(tokens)) {
		return "", false
	}
	return c.Labels[best], true
}

// score returns the best label, its log-odds gap over the runner-up, and
// how many of the tokens the model knows.
func (c *Classifier) score(tokens []string) (best int, gap float64, known int) {
	var buf [8]float64
	s := buf[:0]
	if len(c.LogPrior) > len(buf) {
		s = make([]float64, 0, len(c.LogPrior))
	}
	s = append(s, c.LogPrior...)
	for _, t := range tokens {
		w, ok := c.Weights[t]
		if !ok {
			continue
		}
		known++
		for i := range s {
			s[i] += w[i]
		}
	}
	best, second := 0, -1
	for i := 1; i < len(s); i++ {
		if s[i] > s[best] {
			best, second = i, best
		} else if second < 0 || s[i] > s[second] {
			second = i
		}
	}
	return best, s[best] - s[second], known
}

// tokenize splits text into its distinct lowercase tokens: runs of letters
// and digits of 2 to 24 characters; long numbers become "#num".
func tokenize(text string) []string {
	seen := make(map[string]struct{}, 64)
	out := make([]string, 0, 64)
	var b strings.Builder
	emit := func() {
		if b.Len() >= 2 && b.Len() <= 24*4 {
			t := b.String()
			if isDigits(t) && len(t) > 4 {
				t = "#num"
			}
			if _, dup := seen[t]; !dup && len(out) < maxDocTokens {
				seen[t] = struct{}{}
				out = append(out, t)
			}
		}
		b.Reset()
	}
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		emit()
	}
	emit()
	return out
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// fitNB trains a classifier on token sets and label indexes (no margin).
func fitNB(docs [][]string, y []int, labels []string) *Classifier {
	k := len(labels)
	df := map[string][]int{}
	classDocs := make([]int, k)
	for i, d := range docs {
		classDocs[y[i]]++
		for _, t := range d {
			c := df[t]
			if c == nil {
				c = make([]int, k)
				df[t] = c
			}
			c[y[i]]++
		}
	}
	type tokCount struct {
		tok string
		n   int
	}
	cand := make([]tokCount, 0, len(df))
	for t, c := range df {
		n := 0
		for _, v := range c {
			n += v
		}
		if n >= 2 {
			cand = append(cand, tokCount{t, n})
		}
	}
	sort.Slice(cand, func(i, j int) bool {
		if cand[i].n != cand[j].n {
			return cand[i].n > cand[j].n
		}
		return cand[i].tok < cand[j].tok
	})
	if len(cand) > maxVocabulary {
		cand = cand[:maxVocabulary]
	}
	total := make([]float64, k)
	for _, tc := range cand {
		for j, v := range df[tc.tok] {
			total[j] += float64(v)
		}
	}
	v := float64(len(cand))
	c := &Classifier{Model: "multinomial_nb", Labels: labels, LogPrior: make([]float64, k), Weights: make(map[string][]float64, len(cand)),
		MinKnown: minKnownShare}
	for _, d := range docs {
		c.MaxTokens = max(c.MaxTokens, len(d))
	}
	for j := range k {
		c.LogPrior[j] = math.Log((float64(classDocs[j]) + 1) / (float64(len(docs)) + float64(k)))
	}
	for _, tc := range cand {
		w := make([]float64, k)
		for j, n := range df[tc.tok] {
			w[j] = round6(math.Log((float64(n) + 1) / (total[j] + v)))
		}
		c.Weights[tc.tok] = w
	}
	return c
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// calibrateMargin scores every training run by k-fold cross-fitting and
// returns the smallest log-odds gap at which the answered runs agree with
// their labels at precision or better, and the share of runs it answers.
// ok is false when no gap reaches the precision on minAnswered runs or
// more; best is then the highest agreement seen.
func calibrateMargin(docs [][]string, y []int, labels []string, precision float64, minAnswered int) (margin, share, best float64, ok bool) {
	const folds = 4
	type scored struct {
		gap     float64
		correct bool
	}
	all := make([]scored, 0, len(docs))
	for f := range folds {
		var trDocs [][]string
		var trY []int
		var te []int
		for i := range docs {
			if i%folds == f {
				te = append(te, i)
			} else {
				trDocs, trY = append(trDocs, docs[i]), append(trY, y[i])
			}
		}
		m := fitNB(trDocs, trY, labels)
		for _, i := range te {
			b, gap, known := m.score(docs[i])
			if known == 0 {
				continue
			}
			all = append(all, scored{gap, b == y[i]})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].gap > all[j].gap })
	correct, chosen := 0, -1
	for i, s := range all {
		if s.correct {
			correct++
		}
		p := float64(correct) / float64(i+1)
		if i+1 >= minAnswered {
			best = max(best, p)
			if p >= precision {
				chosen = i
			}
		}
	}
	if chosen < 0 {
		return 0, 0, best, false
	}
	return all[chosen].gap, float64(chosen+1) / float64(len(docs)), best, true
}
