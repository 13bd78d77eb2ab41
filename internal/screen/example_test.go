package screen_test

import (
	"fmt"
	"io"

	"github.com/agentfleet/fleet/internal/screen"
)

func ExampleStrip() {
	fmt.Printf("%q\n", screen.Strip("\x1b]0;✳ Claude\x07\x1b[1;32m✓\x1b[0m tests passed\r\n"))
	// Output: "✓ tests passed\n"
}

func ExampleScreen() {
	scr := screen.New(60, 5)
	defer scr.Close()
	io.WriteString(scr, "$ go test ./...\r\n")
	for _, frame := range []string{"⠋", "⠙", "⠹"} {
		io.WriteString(scr, "\r\x1b[2K\x1b[36m"+frame+"\x1b[0m running")
	}
	io.WriteString(scr, "\r\x1b[2Kok  \tgithub.com/agentfleet/fleet\t0.4s\r\n")
	for _, l := range scr.Lines(0) {
		fmt.Printf("%q\n", l)
	}
	// Output:
	// "$ go test ./..."
	// "ok      github.com/agentfleet/fleet     0.4s"
}
