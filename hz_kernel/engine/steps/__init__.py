"""The five steps of a turn, in the order the runner walks them and the spine names them:
``gather`` → ``think`` → ``outcome`` → ``act`` → ``finish``."""
