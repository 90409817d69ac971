package main

// The command-line tests (main_test.go) check the validated configuration
// through its printed form, so serve prints it instead of serving in this
// test binary. The server tests (server_test.go) run the real server through
// serve() or by swapping runServer back in.
func init() { serveFunc = printConfig }
