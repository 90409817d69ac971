package api

type responsesRequest struct{}
