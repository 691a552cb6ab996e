"""Stand-ins for servers the tests cannot reach (Slack, Discord), speaking their real wire formats."""
