"""runtime.loop"""
