"""Loopback stand-ins for services the tests cannot reach (Discord), speaking their real wire formats."""
