package loop

import "github.com/agentfleet/fleet/internal/ralph/rails"

// money is a cost as the loop's status shows it, for the tests that read it there.
var money = rails.Money
