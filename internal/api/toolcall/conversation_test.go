package toolcall

import (
	"math"
	"testing"

	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

func TestReadConversation_RoundsSinceTheLastUserMessage(t *testing.T) {
	call := []tokenizer.ToolCall{{Name: "get_weather", Arguments: "{}"}}
	user := tokenizer.Message{Role: "user", Content: "Weather?"}
	asks := tokenizer.Message{Role: "assistant", ToolCalls: call}
	result := tokenizer.Message{Role: "tool", Content: "sunny"}
	answer := tokenizer.Message{Role: "assistant", Content: "Sunny."}
	tests := []struct {
		name string
		msgs []tokenizer.Message
		want Conversation
	}{
		{"first turn", []tokenizer.Message{{Role: "system", Content: "Be brief."}, user}, Conversation{}},
		{"after one round", []tokenizer.Message{user, asks, result}, Conversation{AfterResult: true, Rounds: 1}},
		{"parallel calls are one round", []tokenizer.Message{user, {Role: "assistant", ToolCalls: append(call, call...)}, result, result},
			Conversation{AfterResult: true, Rounds: 1}},
		{"after two rounds", []tokenizer.Message{user, asks, result, asks, result}, Conversation{AfterResult: true, Rounds: 2}},
		{"a new question resets", []tokenizer.Message{user, asks, result, answer, user}, Conversation{}},
		{"rounds before a new question do not count", []tokenizer.Message{user, asks, result, answer, user, asks, result},
			Conversation{AfterResult: true, Rounds: 1}},
		{"a result without a call", []tokenizer.Message{user, result}, Conversation{AfterResult: true}},
		{"the assistant's own turn last", []tokenizer.Message{user, asks, result, answer}, Conversation{Rounds: 1}},
	}
	for _, tt := range tests {
		if got := ReadConversation(tt.msgs); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestAutoPolicy_DecaysPerRound(t *testing.T) {
	p := AutoPolicy{Probability: 0.5, AfterResult: 0.1}
	for _, tt := range []struct {
		c    Conversation
		want float64
	}{
		{Conversation{}, 0.5},
		{Conversation{Rounds: 3}, 0.5}, // the assistant spoke last: not after a result
		{Conversation{AfterResult: true}, 0.1},
		{Conversation{AfterResult: true, Rounds: 1}, 0.1},
		{Conversation{AfterResult: true, Rounds: 2}, 0.01},
		{Conversation{AfterResult: true, Rounds: 3}, 0.001},
	} {
		if got := p.CallProbability(tt.c); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%+v: %v, want %v", tt.c, got, tt.want)
		}
	}
}
