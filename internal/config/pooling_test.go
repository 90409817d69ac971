package config

import (
	"slices"
	"testing"
)

func TestPooling_RunnerConvertAndLabels(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		task     string
		generate bool
	}{
		{nil, "embed", true},
		{[]string{"--runner", "generate"}, "", true},
		{[]string{"--runner", "pooling"}, "embed", false},
		{[]string{"--runner", "pooling", "--convert", "none"}, "embed", false},
		{[]string{"--runner", "pooling", "--convert", "classify", "--num-labels", "3"}, "classify", false},
	} {
		cfg := loadArgs(t, tc.args...)
		if cfg.PoolingTask() != tc.task || cfg.Generates() != tc.generate {
			t.Errorf("%v: task %q generates %v, want %q %v", tc.args, cfg.PoolingTask(), cfg.Generates(), tc.task, tc.generate)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--convert", "classify"}, "--convert classify needs --runner pooling (got --runner auto)"},
		{[]string{"--runner", "pooling", "--num-labels", "2"}, "--num-labels is the label count of a classifier: it needs runner pooling and convert classify"},
		{[]string{"--runner", "pooling", "--convert", "classify", "--num-labels", "0"}, "--num-labels must be between 1 and 1024, got 0"},
		{[]string{"--runner", "sideways"}, ""},
	} {
		got := loadProblems(t, flagOptions(t, tc.args...))
		if tc.want != "" && !slices.Contains(got, tc.want) {
			t.Errorf("%v: problems %q, want %q", tc.args, got, tc.want)
		}
	}
}
