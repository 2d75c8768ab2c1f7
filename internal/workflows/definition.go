package workflows

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/svc-gateway/svc/internal/errs"
)

// The kinds of step a definition may hold.
const (
	// StepChat is one chat-completions call through the gateway. With
	// Labels set it is a classification: the answer is one of them.
	StepChat = "chat"
	// StepRoute picks a destination by the output of an earlier step.
	StepRoute = "route"
)

// Definition is a workflow's body: declarative data that svc and its
// clients interpret, never code. It names the app and agent its calls run
// as, so that its runs group into one pattern, and carries sample inputs a
// demo can replay through the gateway.
type Definition struct {
	Version int      `json:"version"`
	App     string   `json:"app"`   // X-Svc-App of the workflow's calls
	Agent   string   `json:"agent"` // X-Svc-Agent of the workflow's calls
	Inputs  []string `json:"inputs"`
	Steps   []Step   `json:"steps"`
	Samples []Sample `json:"samples"`
}

// Step is one stage of a workflow.
type Step struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	Description string `json:"description,omitempty"`

	// A chat step: the request it sends. Message contents may hold
	// {{input.NAME}} placeholders, filled from the workflow's inputs.
	Model       string    `json:"model,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	Messages    []Message `json:"messages,omitempty"`
	// Labels are the answers a classifying chat step accepts; its
	// messages list them for the model to choose from.
	Labels []string `json:"labels,omitempty"`

	// A route step: the step whose output picks a route, the destination
	// of each output, and the destination of any other output.
	From    string            `json:"from,omitempty"`
	Routes  map[string]string `json:"routes,omitempty"`
	Default string            `json:"default,omitempty"`
}

// Message is one chat-completions message of a chat step.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Sample is a recorded input with the output each step is expected to
// give for it (step id → output).
type Sample struct {
	ID     string            `json:"id"`
	Input  map[string]string `json:"input"`
	Expect map[string]string `json:"expect"`
}

// ChatRequest is the chat-completions body a chat step sends.
type ChatRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature *float64  `json:"temperature,omitempty"`
}

var placeholder = regexp.MustCompile(`\{\{\s*input\.([A-Za-z0-9_]+)\s*\}\}`)

// Step returns the step with the given id.
func (d *Definition) Step(id string) (*Step, bool) {
	for i := range d.Steps {
		if d.Steps[i].ID == id {
			return &d.Steps[i], true
		}
	}
	return nil, false
}

// ChatRequest fills the chat step stepID's messages with input and returns
// the request it sends. Returns errs.Invalid when the step is not a chat
// step or an input it names is missing.
func (d *Definition) ChatRequest(stepID string, input map[string]string) (ChatRequest, error) {
	st, ok := d.Step(stepID)
	if !ok || st.Kind != StepChat {
		return ChatRequest{}, errs.Invalidf("step", "no chat step %q", stepID)
	}
	req := ChatRequest{Model: st.Model, Temperature: st.Temperature, Messages: make([]Message, len(st.Messages))}
	var missing []string
	for i, m := range st.Messages {
		content := placeholder.ReplaceAllStringFunc(m.Content, func(p string) string {
			name := placeholder.FindStringSubmatch(p)[1]
			v, ok := input[name]
			if !ok && !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
			return v
		})
		req.Messages[i] = Message{Role: m.Role, Content: content}
	}
	if len(missing) > 0 {
		return ChatRequest{}, errs.Invalidf("input", "missing input %s", strings.Join(missing, ", "))
	}
	return req, nil
}

// Validate checks that the definition can be interpreted: unique step ids,
// known kinds, chat steps with a model and messages that name only declared
// inputs and list every label, route steps that follow a labelled step and
// route only its labels, and samples that give every input and expect only
// outputs a step can give.
func (d *Definition) Validate() error {
	if len(d.Steps) == 0 {
		return errs.Invalidf("steps", "a workflow needs at least one step")
	}
	seen := map[string]*Step{}
	for i := range d.Steps {
		st := &d.Steps[i]
		if st.ID == "" {
			return errs.Invalidf("steps", "step %d has no id", i+1)
		}
		if seen[st.ID] != nil {
			return errs.Invalidf("steps", "step id %q is used twice", st.ID)
		}
		if err := d.validateStep(st, seen); err != nil {
			return err
		}
		seen[st.ID] = st
	}
	for _, sm := range d.Samples {
		for _, in := range d.Inputs {
			if _, ok := sm.Input[in]; !ok {
				return errs.Invalidf("samples", "sample %q has no input %q", sm.ID, in)
			}
		}
		for stepID, out := range sm.Expect {
			st := seen[stepID]
			if st == nil {
				return errs.Invalidf("samples", "sample %q expects an output of unknown step %q", sm.ID, stepID)
			}
			if len(st.Labels) > 0 && !slices.Contains(st.Labels, out) {
				return errs.Invalidf("samples", "sample %q expects %q, not a label of step %q", sm.ID, out, stepID)
			}
		}
	}
	return nil
}

func (d *Definition) validateStep(st *Step, before map[string]*Step) error {
	switch st.Kind {
	case StepChat:
		if st.Model == "" || len(st.Messages) == 0 {
			return errs.Invalidf("steps", "chat step %q needs a model and messages", st.ID)
		}
		var text strings.Builder
		for _, m := range st.Messages {
			for _, p := range placeholder.FindAllStringSubmatch(m.Content, -1) {
				if !slices.Contains(d.Inputs, p[1]) {
					return errs.Invalidf("steps", "chat step %q uses undeclared input %q", st.ID, p[1])
				}
			}
			if m.Role == "system" || m.Role == "developer" {
				text.WriteString(m.Content)
			}
		}
		for _, l := range st.Labels {
			if !strings.Contains(text.String(), l) {
				return errs.Invalidf("steps", "chat step %q does not list its label %q in a system message", st.ID, l)
			}
		}
	case StepRoute:
		from := before[st.From]
		if from == nil {
			return errs.Invalidf("steps", "route step %q must follow the step it routes by (%q)", st.ID, st.From)
		}
		for out := range st.Routes {
			if len(from.Labels) > 0 && !slices.Contains(from.Labels, out) {
				return errs.Invalidf("steps", "route step %q routes %q, not a label of step %q", st.ID, out, st.From)
			}
		}
		if st.Default == "" {
			return errs.Invalidf("steps", "route step %q needs a default destination", st.ID)
		}
	default:
		return errs.Invalidf("steps", "step %q has unknown kind %q", st.ID, st.Kind)
	}
	return nil
}

// labelPrompt is a classification instruction listing labels with what
// each covers, in the form the gateway's deterministic mock provider (and
// any real model) reads as a list to choose from.
func labelPrompt(intro string, labels [][2]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", intro)
	for _, l := range labels {
		fmt.Fprintf(&b, "- %s: %s\n", l[0], l[1])
	}
	b.WriteString("Answer with the label only.")
	return b.String()
}
