class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no")


def custom_kernel(data):
    raise Unprintable()
