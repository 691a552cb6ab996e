"""The harness server on the GPU machine: a warm process that forks a fresh, sandboxed job per evaluation
(``server_process``, ``supervisor``), watches it from outside (``watch``, ``breaches``), and assembles the result
(``assembly``); also the entry of remote runners (``remote``) and problems with their own evaluator."""
