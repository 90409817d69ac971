package chattemplate

import "errors"

// RaiseError is a template's raise_exception(message): the template
// rejected its input (e.g. roles that do not alternate). The API answers
// it with a 400 carrying Message.
type RaiseError struct {
	// Message is the template's text, unchanged.
	Message string
}

func (e *RaiseError) Error() string { return e.Message }

// ErrBadInput marks errors caused by the request rather than the template:
// JSON that is not an array where one is needed, a forbidden kwarg, or a
// continue_final_message request the conversation cannot satisfy.
var ErrBadInput = errors.New("bad chat template input")

// Errors for continue_final_message; all match ErrBadInput.
var (
	// ErrIncompatibleFlags carries transformers' message for both flags set.
	ErrIncompatibleFlags = badInput("continue_final_message and add_generation_prompt are not compatible. " +
		"Use continue_final_message when you want the model to continue the final message, " +
		"and add_generation_prompt when you want to add a header that will prompt it to start a new assistant message instead.")
	// ErrContinueNotAssistant: only an assistant message can be continued.
	ErrContinueNotAssistant = badInput("continue_final_message is set but the final message is not an assistant message")
	// ErrContinueLost carries transformers' message for a template that
	// dropped part of the final message, so there is nothing to continue.
	ErrContinueLost = badInput("continue_final_message is set but the final message does not appear in the chat after " +
		"applying the chat template! This can happen if the chat template deletes portions of the final message. " +
		"Please verify the chat template and final message in your chat to ensure they are compatible.")
)

// inputError is an ErrBadInput with its own message.
type inputError struct{ message string }

func badInput(message string) error { return &inputError{message: message} }

func (e *inputError) Error() string { return e.message }

func (e *inputError) Is(target error) bool { return target == ErrBadInput }
