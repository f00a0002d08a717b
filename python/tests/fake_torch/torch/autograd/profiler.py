"""torch.autograd.profiler.profile's shape in torch 2.11: __enter__ calls _prepare_trace (where
Kineto takes CUPTI) then _start_trace; __exit__ disables the profiler (no cuptiFinalize)."""

log = []


class profile:
    def __init__(self, activities=()):
        self.kineto_activities = set(activities)

    def __enter__(self):
        self._prepare_trace()
        self._start_trace()
        return self

    def _prepare_trace(self):
        log.append("prepare")

    def _start_trace(self):
        log.append("start")

    def __exit__(self, exc_type, exc_val, exc_tb):
        log.append("exit")
