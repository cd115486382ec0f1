"""runtime.protocol"""
