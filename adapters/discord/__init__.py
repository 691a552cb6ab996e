"""The Discord adapter: slash commands in, replies out; it only translates (see ``app``).

Modules: ``app`` (the bot and its entry points), ``commands`` (one module per feature), ``respond``
(answering interactions, errors in one place), ``replies`` (the reply consumer), ``render`` (replies as
Discord messages), ``poster`` (posting with the bot token), ``live`` (a submission's status message),
``pages`` (pagination), ``options`` (autocomplete), ``identity`` (who asks, where to answer), ``core_link``
(asking the core), ``endpoint`` (which Discord API to talk to).
"""
