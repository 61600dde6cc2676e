"""The timeline stage: a job's events split into attempts and per-worker timelines.

``attempts`` builds them; ``exitcodes`` decodes what a worker's exit status means."""
