"""The Slack adapter: Slack events in as ``Command`` messages, ``Reply`` messages out as Slack messages.

One module per feature, each small::

    config     settings checked before start (tokens, modes, the Web API URL)
    run        ``kernelrank slack``: Socket Mode or HTTP, the bus connection, start and stop
    app        the Bolt app, its Web API client (429 retries), once-per-event middleware
    slash      the slash command and its subcommands
    modal      the submission form (file input, choices, view_submission)
    mentions   mentions and direct messages, with or without a kernel file
    actions    buttons under reports
    dispatch   running a query or a submission, the same from every entry point
    grammar    the words people type
    identity   who is asking (users.info)
    intake     downloading and checking kernel files
    answers    where an answer goes (response_url, thread, ephemeral)
    blocks     a Reply as Block Kit within Slack's limits
    poster     Web API calls that post, and what to do when Slack refuses
    replies    the durable consumer of the core's replies, with the delivery ledger

The adapter decides nothing about kernels or rankings: the core does.
"""
