package harness

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// anthropic is the Anthropic Messages API (POST /v1/messages), streamed
// as the API streams it: message_start, content_block_start, deltas
// (text_delta, or input_json_delta for a tool_use's input),
// content_block_stop, message_delta with the stop_reason, message_stop.
// Its shell tool is Claude Code's Bash.
type anthropic struct{}

// anthropicRequest is the part of a Messages request the server reads.
type anthropicRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// anthropicBlock is a content block of a message.
type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"` // a tool_result's: a string or text blocks
}

func parseAnthropic(body []byte) anthropicRequest {
	var r anthropicRequest
	_ = json.Unmarshal(body, &r)
	return r
}

func (anthropic) conversation(body []byte) bool {
	for _, tool := range parseAnthropic(body).Tools {
		if tool.Name == "Bash" {
			return true
		}
	}
	return false
}

func (anthropic) results(body []byte) []string {
	var out []string
	for _, m := range parseAnthropic(body).Messages {
		var blocks []anthropicBlock
		if m.Role != "user" || json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				out = append(out, blockText(b.Content))
			}
		}
	}
	return out
}

// blockText is a tool_result's content as text: the string, or its text blocks joined.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []anthropicBlock
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

func (anthropic) answer(w http.ResponseWriter, r *http.Request, body []byte, i int, tr turn) {
	req := parseAnthropic(body)
	id := "msg_" + strconv.Itoa(i+1)
	var block map[string]any
	var delta map[string]any
	stop := "end_turn"
	if tr.command != "" {
		input := map[string]any{"command": tr.command, "description": "Run the command"}
		if tr.timeout > 0 {
			input["timeout"] = tr.timeout.Milliseconds()
		}
		js, _ := json.Marshal(input)
		toolID := "toolu_" + strconv.Itoa(i+1)
		block = map[string]any{"type": "tool_use", "id": toolID, "name": "Bash", "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta", "partial_json": string(js)}
		stop = "tool_use"
		if !req.Stream {
			block["input"] = input
		}
	} else {
		block = map[string]any{"type": "text", "text": ""}
		delta = map[string]any{"type": "text_delta", "text": tr.text}
		if !req.Stream {
			block["text"] = tr.text
		}
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	msg := map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}
	if !req.Stream {
		msg["content"] = []any{block}
		msg["stop_reason"] = stop
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(msg)
		return
	}
	s := newSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": msg})
	s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block})
	s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta})
	s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}
