package calibrate

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// words are plain lowercase English words, each one token in common BPE
// vocabularies; prompts are made of them so their token count is close
// to their word count and easy to correct.
var words = strings.Fields(`the of and to in is was he for it with as his on be at by had are but from
	or have an they which one you were her all she there would their we him been has when who will
	more no if out so said what up its about into than them can only other new some could time these
	two may then do first any my now such like our over man me even most made after also did many
	before must through back years where much your way well down should because each just those
	people how too little state good very make world still own see men work long get here between
	both life being under never day same another know while last might us great old year off come
	since against go came right used take three`)

// text returns n words starting at word offset from (deterministic).
func text(n, from int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[(from+i*7)%len(words)])
	}
	return b.String()
}

// tokenCounter counts a prompt's tokens: /tokenize when the server has it,
// else a one-token completion's usage.prompt_tokens.
type tokenCounter func(ctx context.Context, prompt string) (int, error)

func (c *Client) counter(info ServerInfo) tokenCounter {
	if info.Tokenize {
		return c.tokenize
	}
	return func(ctx context.Context, prompt string) (int, error) {
		// A failing server fails some requests; a count is worth a retry.
		res, err := c.stream(ctx, prompt, 1, timeNow(), nil)
		for try := 0; err != nil && try < 3 && ctx.Err() == nil; try++ {
			res, err = c.stream(ctx, prompt, 1, timeNow(), nil)
		}
		if err != nil {
			return 0, err
		}
		if res.PromptTokens <= 0 {
			return 0, fmt.Errorf("the server reports no usage.prompt_tokens and has no /tokenize: prompt lengths cannot be measured")
		}
		return res.PromptTokens, nil
	}
}

// prompts builds texts of a wanted token count: a unique tag then filler
// words. It learns the words-per-token map once per wanted length (a few
// counts each) and reuses it for every tag, since tags differ only in a
// number.
type prompts struct {
	nonce string
	count tokenCounter
	words map[int]int // wanted tokens → filler words
}

func newPrompts(count tokenCounter) *prompts {
	return &prompts{count: count, words: map[int]int{}, nonce: fmt.Sprintf("q%x", time.Now().UnixNano()%(1<<40))}
}

// fillerWords returns how many filler words after a tag make want tokens.
func (p *prompts) fillerWords(ctx context.Context, want int) (int, error) {
	if n, ok := p.words[want]; ok {
		return n, nil
	}
	n := max(want-4, 1)
	best, bestErr := n, -1
	for range 6 {
		got, err := p.count(ctx, p.tag(0, 0, 0)+text(n, 0))
		if err != nil {
			return 0, err
		}
		d := want - got
		if bestErr < 0 || abs(d) < bestErr {
			best, bestErr = n, abs(d)
		}
		if d == 0 {
			break
		}
		// Words per token is near 1; step by the difference (damped when
		// a word is worth several tokens).
		step := d
		if n > 0 && got > 0 {
			step = int(float64(d) * float64(n) / float64(got))
		}
		if step == 0 {
			step = sign(d)
		}
		n = max(n+step, 1)
	}
	p.words[want] = best
	return best, nil
}

// tag makes a prompt unique to its calibration run, experiment, round and
// stream, so that nothing but a designed prefix is ever found in the
// prefix cache — not even a previous calibration's prompts on the same
// server.
func (p *prompts) tag(exp, round, stream int) string {
	return fmt.Sprintf("%s%dx%dy%d: ", p.nonce, exp, round, stream)
}

func abs(x int) int { return max(x, -x) }

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}
