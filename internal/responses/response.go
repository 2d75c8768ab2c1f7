package responses

import (
	"encoding/json"
	"strconv"
	"strings"
)

// suffixLen is the length of a run id's suffix (ids.Ordered).
const suffixLen = 20

// ResponseID is the id of the response a run answered: "resp_" and the run
// id's suffix, so that a response is found through its run.
func ResponseID(runID string) string { return "resp_" + strings.TrimPrefix(runID, "run_") }

// RunID is the run behind a response id.
func RunID(responseID string) (string, bool) {
	s, ok := strings.CutPrefix(responseID, "resp_")
	if !ok || len(s) != suffixLen {
		return "", false
	}
	return "run_" + s, true
}

// itemID is the id of a response's output item at index i: "msg_" or
// "fc_", the run id's suffix, and the index.
func itemID(kind, suffix string, i int) string { return kind + "_" + suffix + strconv.Itoa(i) }

// ItemRun is the run and output index behind an output item's id.
func ItemRun(id string) (runID string, index int, ok bool) {
	_, s, ok := strings.Cut(id, "_")
	if !ok || (!strings.HasPrefix(id, "msg_") && !strings.HasPrefix(id, "fc_")) || len(s) <= suffixLen {
		return "", 0, false
	}
	index, err := strconv.Atoi(s[suffixLen:])
	if err != nil || index < 0 || strconv.Itoa(index) != s[suffixLen:] {
		return "", 0, false
	}
	return "run_" + s[:suffixLen], index, true
}

// MarshalJSON writes an item in its type's shape, with every field the
// SDKs read present (content and arguments too when empty).
func (it Item) MarshalJSON() ([]byte, error) {
	if it.Type == "function_call" {
		return json.Marshal(struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Status    string `json:"status"`
		}{it.Type, it.ID, it.CallID, it.Name, it.Arguments, it.Status})
	}
	content := it.Content
	if content == nil {
		content = []Part{}
	}
	return json.Marshal(struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []Part `json:"content"`
	}{it.Type, it.ID, it.Status, it.Role, content})
}

// Response is the response the request will answer with, before its
// output: id, time and the request's settings echoed.
func (r *Request) Response(id string, createdAt int64) Response {
	w := r.w
	resp := Response{ID: id, Object: "response", CreatedAt: createdAt, Status: "in_progress",
		Instructions: w.Instructions, MaxOutputTokens: w.MaxOutputTokens, Metadata: w.Metadata, Model: r.Model,
		Output: []Item{}, ParallelToolCalls: w.ParallelToolCalls == nil || *w.ParallelToolCalls,
		PreviousResponseID: w.PreviousResponseID, Store: w.Store == nil || *w.Store, Temperature: w.Temperature,
		Text: TextConfig{Format: r.format}, ToolChoice: w.ToolChoice, Tools: r.tools, TopP: w.TopP,
		Truncation: "disabled", User: w.User}
	if w.Reasoning != nil {
		resp.Reasoning.Effort = w.Reasoning.Effort
	}
	return resp.defaults()
}

func (resp Response) defaults() Response {
	if len(resp.Instructions) == 0 {
		resp.Instructions = json.RawMessage("null")
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	if absent(resp.ToolChoice) {
		resp.ToolChoice = json.RawMessage(`"auto"`)
	}
	if resp.Tools == nil {
		resp.Tools = []json.RawMessage{}
	}
	if len(resp.Text.Format) == 0 {
		resp.Text.Format = json.RawMessage(`{"type":"text"}`)
	}
	return resp
}

// FromCompletion completes resp from a chat completion: its output items,
// usage and status.
func FromCompletion(resp *Response, body []byte) error {
	var c chatCompletion
	if err := json.Unmarshal(body, &c); err != nil {
		return err
	}
	if c.Model != "" {
		resp.Model = c.Model
	}
	finish := ""
	var msg chatMessage
	if len(c.Choices) > 0 {
		msg, finish = c.Choices[0].Message, c.Choices[0].FinishReason
	}
	suffix := strings.TrimPrefix(resp.ID, "resp_")
	var text *string
	if !absent(msg.Content) {
		var s string
		if err := json.Unmarshal(msg.Content, &s); err == nil {
			text = &s
		}
	}
	resp.Output = resp.Output[:0]
	if text != nil && *text == "" && len(msg.ToolCalls) > 0 {
		text = nil // an empty text beside tool calls is no message, as in a stream
	}
	if text != nil || msg.Refusal != nil || len(msg.ToolCalls) == 0 {
		item := Item{Type: "message", ID: itemID("msg", suffix, 0), Status: "completed", Role: "assistant"}
		if text != nil || msg.Refusal == nil {
			s := ""
			if text != nil {
				s = *text
			}
			item.Content = append(item.Content, textPart(s))
		}
		if msg.Refusal != nil {
			item.Content = append(item.Content, Part{Type: "refusal", Refusal: msg.Refusal})
		}
		resp.Output = append(resp.Output, item)
	}
	for _, tc := range msg.ToolCalls {
		resp.Output = append(resp.Output, Item{Type: "function_call", ID: itemID("fc", suffix, len(resp.Output)),
			Status: "completed", CallID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	resp.Usage = c.Usage.usage()
	resp.finish(finish)
	return nil
}

// finish sets the status a chat finish reason means. A finished response
// always has usage (zero when the upstream reported none): clients read it
// unconditionally.
func (resp *Response) finish(reason string) {
	if resp.Usage == nil {
		resp.Usage = &Usage{}
	}
	resp.Status = "completed"
	if cut := cutShort(reason); cut != "" {
		resp.Status, resp.IncompleteDetails = "incomplete", &Incomplete{Reason: cut}
		// The item the answer stopped in: the ones before it were whole.
		if n := len(resp.Output); n > 0 {
			resp.Output[n-1].Status = "incomplete"
		}
	}
}

// cutShort is why a chat finish reason leaves a response incomplete, or
// "" when it does not.
func cutShort(reason string) string {
	switch reason {
	case "length":
		return "max_output_tokens"
	case "content_filter":
		return "content_filter"
	}
	return ""
}
