"""runtime.hooks"""
