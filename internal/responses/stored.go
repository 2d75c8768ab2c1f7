package responses

import (
	"encoding/json"
	"errors"
)

// Run is what a stored run keeps that a response is rebuilt from: the
// chat request and answer (a completion, or a stream's chunks) as stored.
type Run struct {
	ID        string
	CreatedAt int64
	Model     string
	Succeeded bool
	ErrorCode string
	Error     string
	Request   []byte
	Response  []byte
	// Origin is what the request said beside its chat request
	// (Request.Origin); nil for a run that kept none.
	Origin []byte
}

// storedRequest is what a response echoes of the chat request it became.
// errNotChat is Stored's refusal of a run that was no chat call.
var errNotChat = errors.New("responses: the run was no chat call")

type storedRequest struct {
	Model             string            `json:"model"`
	Messages          []json.RawMessage `json:"messages"`
	Tools             []chatTool        `json:"tools"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls"`
	ResponseFormat    *struct {
		Type       string          `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema"`
	} `json:"response_format"`
	MaxTokens   *int     `json:"max_tokens"`
	Temperature *float64 `json:"temperature"`
	TopP        *float64 `json:"top_p"`
	User        *string  `json:"user"`
}

// Stored rebuilds the response a run answered, and the conversation it
// ends (its chat messages, then the answer as an assistant message), which
// a request naming it as previous_response_id continues. The instructions,
// metadata, previous_response_id and store come from the run's Origin.
func Stored(run Run) (Response, []json.RawMessage, error) {
	var req storedRequest
	if err := json.Unmarshal(run.Request, &req); err != nil {
		return Response{}, nil, err
	}
	if req.Messages == nil {
		return Response{}, nil, errNotChat // an embeddings call, say
	}
	resp := Response{ID: ResponseID(run.ID), Object: "response", CreatedAt: run.CreatedAt, Model: run.Model,
		Output: []Item{}, ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls, Store: true,
		MaxOutputTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP, User: req.User,
		ToolChoice: storedChoice(req.ToolChoice), Truncation: "disabled"}
	for _, t := range req.Tools {
		flat, _ := json.Marshal(wireTool{Type: "function", Name: t.Function.Name, Description: t.Function.Description,
			Parameters: t.Function.Parameters, Strict: t.Function.Strict})
		resp.Tools = append(resp.Tools, flat)
	}
	if f := req.ResponseFormat; f != nil && f.Type != "" {
		resp.Text.Format, _ = json.Marshal(map[string]string{"type": f.Type})
		var schema map[string]json.RawMessage
		if f.Type == "json_schema" && json.Unmarshal(f.JSONSchema, &schema) == nil && schema != nil {
			// The Responses shape is chat's json_schema object with the type beside its fields.
			schema["type"] = json.RawMessage(`"json_schema"`)
			resp.Text.Format, _ = json.Marshal(schema)
		}
	}
	o := readOrigin(run.Origin)
	o.apply(&resp)
	resp = resp.defaults()
	if !run.Succeeded {
		resp.Status = "failed"
		resp.Error = &ResponseError{Code: run.ErrorCode, Message: run.Error}
		return resp, nil, nil
	}
	if err := answer(&resp, run.Response); err != nil {
		return Response{}, nil, err
	}
	var b builder
	for _, it := range resp.Output {
		if err := b.add(0, it.input()); err != nil {
			return Response{}, nil, err
		}
	}
	history := req.Messages
	for _, m := range b.msgs {
		raw, _ := json.Marshal(m)
		history = append(history, raw)
	}
	return resp, history, nil
}

// answer reads a stored answer into resp: a completion, or the chunks of
// a stream replayed.
func answer(resp *Response, body []byte) error {
	var streamed struct {
		Object string            `json:"object"`
		Chunks []json.RawMessage `json:"chunks"`
	}
	if json.Unmarshal(body, &streamed) != nil || streamed.Object != "chat.completion.stream" {
		return FromCompletion(resp, body)
	}
	s := NewStream(*resp, func(string, []byte) error { return nil })
	for _, c := range streamed.Chunks {
		if err := s.Chunk(c); err != nil {
			return err
		}
	}
	if err := s.Finish(); err != nil {
		return err
	}
	*resp = s.Response()
	return nil
}

// storedChoice is chat's tool_choice in the Responses shape.
func storedChoice(raw json.RawMessage) json.RawMessage {
	var f struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &f) == nil && f.Function.Name != "" {
		b, _ := json.Marshal(map[string]string{"type": "function", "name": f.Function.Name})
		return b
	}
	return raw
}

// Item returns the output item of a response at index, for an
// item_reference.
func (resp Response) Item(index int) (Item, bool) {
	if index < 0 || index >= len(resp.Output) {
		return Item{}, false
	}
	return resp.Output[index], true
}
