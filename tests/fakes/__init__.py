"""Stand-ins for servers out of reach from our machines, speaking their real formats (tests import ``fakes.X``)."""
